"""The columns of a platform's product export that are the shop's own records, not what it sells.

Shopify, WooCommerce, Magento, BigCommerce and Google Merchant exports carry, beside a
product's facts, the shop's bookkeeping: stock levels, cost, tax and shipping settings, SEO
text, dates of the record, the export's own cross-references. Read as facets, they were values
a shopper could filter and count by (a listing's "cost per item: 27-39", "tax class: parent" on
every variation), words that matched queries ("'pebble' matched tax class:parent") and words a
"like this" query was made of. They are left out, by name, and said; a schema's `[columns]`
entry for one reads it as any column.
"""

from __future__ import annotations

from .headers import normalized

# names as `normalized` writes them (case, spaces and punctuation aside)
BOOKKEEPING_COLUMNS = frozenset({
    # Shopify
    "costperitem", "variantinventoryqty", "variantinventorytracker", "variantinventorypolicy",
    "variantfulfillmentservice", "variantrequiresshipping", "varianttaxable", "varianttaxcode",
    "variantgrams", "variantweightunit", "variantcompareatprice", "giftcard", "seotitle",
    "seodescription", "imageposition", "imagealttext", "variantimage",
    # WooCommerce
    "taxstatus", "taxclass", "stock", "lowstockamount", "backordersallowed", "soldindividually",
    "allowcustomerreviews", "purchasenote", "shippingclass", "downloadlimit", "downloadexpirydays",
    "position", "groupedproducts", "upsells", "crosssells", "buttontext",
    # Magento
    "qty", "outofstockqty", "useconfigminqty", "isqtydecimal", "allowbackorders", "useconfigbackorders",
    "mincartqty", "useconfigmincartqty", "maxcartqty", "useconfigmaxcartqty", "notifyonstockbelow",
    "useconfignotifystockqty", "managestock", "useconfigmanagestock", "useconfigqtyincrements",
    "qtyincrements", "useconfigenableqtyinc", "enableqtyincrements", "isdecimaldivided", "websiteid",
    "productwebsites", "attributesetcode", "taxclassname", "createdat", "updatedat", "newfromdate",
    "newtodate", "specialpricefromdate", "specialpricetodate", "metatitle", "metakeywords",
    "metadescription", "urlkey", "displayproductoptionsin", "msrpdisplayactualpricetype",
    "giftmessageavailable", "storeviewcode", "configurablevariationlabels", "configurablevariations",
    "associatedskus", "relatedskus", "crosssellskus", "upsellskus", "relatedposition",
    "crosssellposition", "upsellposition", "hidefromproductpage", "customoptions",
    "baseimagelabel", "smallimagelabel", "thumbnailimagelabel", "swatchimagelabel",
    "additionalimagelabels", "pagelayout", "productoptionscontainer", "customdesign",
    "customlayoutupdate",
    # BigCommerce
    "currentstocklevel", "lowstocklevel", "stocklevel", "trackinventory", "fixedshippingcost",
    "sortorder", "costprice", "pagetitle", "productinventory", "productfiles",
    # Google Merchant
    "customlabel0", "customlabel1", "customlabel2", "customlabel3", "customlabel4", "adsredirect",
    "adsgrouping", "adslabels", "excludeddestination", "includeddestination", "identifierexists",
    "shippingweight", "shippinglabel",
    # any shop
    "inventory", "inventoryqty", "inventoryquantity", "stockqty", "stockquantity", "quantityinstock",
    "cost", "unitcost", "wholesaleprice", "margin",
})


def is_bookkeeping_column(name: str) -> bool:
    """Whether a column is the shop's own record (`BOOKKEEPING_COLUMNS`, by its normalized name)."""
    return normalized(name) in BOOKKEEPING_COLUMNS
